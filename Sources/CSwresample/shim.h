#ifndef CSWRESAMPLE_SHIM_H
#define CSWRESAMPLE_SHIM_H
#include <libswresample/swresample.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>
#endif
