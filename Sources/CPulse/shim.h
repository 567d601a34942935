#ifndef CPULSE_SHIM_H
#define CPULSE_SHIM_H
// libpulse's asynchronous API: the native PulseAudio output device plays through a threaded
// main loop, a context and one playback stream. Only the types and constants are used from
// here; the functions are looked up with dlsym.
#include <pulse/pulseaudio.h>

// The Float32 sample format. sample.h defines PA_SAMPLE_FLOAT32LE as a macro naming itself as
// well as an enumerator; built with whole-module optimisation, where CPulseSimple (which
// includes the same header) is imported too, Swift finds no such name from this module.
static inline pa_sample_format_t spool_pulse_float32(void) { return PA_SAMPLE_FLOAT32LE; }
#endif
