#ifndef COPUSFILE_SHIM_H
#define COPUSFILE_SHIM_H
// pkg-config's opusfile cflags put /usr/include/opus on the include path; opusfile.h brings
// in <ogg/ogg.h> (ogg_packet, for the decode callback) and <opus_multistream.h>, whose
// opus_multistream_packet_unpad Spool calls to check a packet's framing (hence `link "opus"`).
#include <opusfile.h>
#endif
