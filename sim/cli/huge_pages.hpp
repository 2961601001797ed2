// The simulator's heap on transparent huge pages.
#pragma once

namespace atomsim {

// Starts this process again (same arguments) with glibc told to back its heap
// with transparent huge pages, where the kernel gives them only on request
// and nothing set the tunable yet; returns when it does not (the tunable set,
// huge pages always or never given, another allocator's tool watching, or
// the restart failing). A simulation touches hundreds of megabytes of small
// objects all over, and on a virtual machine every TLB miss walks two levels
// of page tables (docs/notes/2026-11-27-threads-and-full-size-traces.md, "Huge pages"). glibc reads its
// tunables only when a process starts.
void restart_with_huge_page_heap(char** argv);

}  // namespace atomsim
