#ifndef CSPEEXDSP_SHIM_H
#define CSPEEXDSP_SHIM_H
// libspeexdsp's resampler only (PulseAudio's default converter); Debian builds it in float.
#include <speex/speex_resampler.h>
#endif
