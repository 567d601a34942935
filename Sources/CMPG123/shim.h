#ifndef CMPG123_SHIM_H
#define CMPG123_SHIM_H
// No _FILE_OFFSET_BITS here: on 64-bit Linux off_t is already 64 bits, and defining it
// would rename every offset function to its _64 alias.
#include <mpg123.h>
#endif
