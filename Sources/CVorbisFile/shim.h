#ifndef CVORBISFILE_SHIM_H
#define CVORBISFILE_SHIM_H
// vorbisfile.h otherwise defines static callback tables (OV_CALLBACKS_DEFAULT…) in every
// translation unit; Spool always passes its own callbacks.
#define OV_EXCLUDE_STATIC_CALLBACKS
#include <vorbis/vorbisfile.h>
#endif
