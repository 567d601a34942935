#ifndef CALSA_SHIM_H
#define CALSA_SHIM_H
#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>

// Defined in Swift (SpoolOutput, ALSALog.swift): where libasound's error reports go.
void spool_alsa_log(const char *file, int line, const char *function, int err, const char *message);

// libasound's error handler is variadic, which Swift cannot define: this one formats the
// report and hands the line to Spool instead of printing it to standard error.
static void spool_alsa_error_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    char message[512];
    va_list arguments;
    va_start(arguments, fmt);
    vsnprintf(message, sizeof message, fmt, arguments);
    va_end(arguments);
    spool_alsa_log(file, line, function, err, message);
}

// Routes every libasound error report of the process (OpenAL Soft's ALSA driver's too) to Spool.
static inline void spool_alsa_route_errors(void) { snd_lib_error_set_handler(spool_alsa_error_handler); }
#endif
