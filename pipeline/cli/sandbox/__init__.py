"""`pmw sandbox`: the emulator served over HTTP; its world options serve `pmw demo` too."""
