// The rate converters live in SpoolResampling, shared with the OpenAL back-end; programs
// that import SpoolBufferQueue see them as before.
@_exported import SpoolResampling
