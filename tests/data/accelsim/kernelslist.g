MemcpyHtoD,0x00007f2000000000,4096
kernel-1.traceg
