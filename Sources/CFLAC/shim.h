#ifndef CFLAC_SHIM_H
#define CFLAC_SHIM_H
// libFLAC's stream decoder, which StreamDecoder feeds FLAC frames through.
#include <FLAC/stream_decoder.h>
#endif
