#ifndef COPUSFILE_SHIM_H
#define COPUSFILE_SHIM_H
// pkg-config's opusfile cflags put /usr/include/opus on the include path; opusfile.h brings
// in <ogg/ogg.h> (ogg_packet, for the decode callback) and <opus_multistream.h>, whose
// opus_multistream_packet_unpad Spool calls to check a packet's framing and whose
// multistream decoder decodes the packets of a stream (hence `link "opus"`).
#include <opusfile.h>

// opus_multistream_decoder_ctl is variadic, which Swift cannot call: one function per
// request Spool makes.

/// Sets the decoder's output gain in Q7.8 dB (OPUS_SET_GAIN), as libopusfile applies an
/// OpusHead's output gain.
static inline int spool_opus_ms_set_gain(OpusMSDecoder *decoder, opus_int32 gain) {
    return opus_multistream_decoder_ctl(decoder, OPUS_SET_GAIN(gain));
}

/// Forgets the decoder's state (OPUS_RESET_STATE), as after a seek.
static inline int spool_opus_ms_reset(OpusMSDecoder *decoder) {
    return opus_multistream_decoder_ctl(decoder, OPUS_RESET_STATE);
}
#endif
