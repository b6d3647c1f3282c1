// Processes that own their signals (docs/design.md §13, "Stopping"): SIGTERM and SIGINT are taken by one
// watcher thread of ours, never by a handler some library installed (libfabric's psm dependency installs
// handlers that call exit() from the signal, which deadlocks when a destructor crashes during that exit).
#pragma once

#include <chrono>

namespace dualpath {

// Installs this process's own handlers for SIGTERM and SIGINT (replacing any a library installed when it
// was loaded) and starts the watcher thread; crash signals get their default action back. Call once,
// first thing in main. On the first signal stop_requested() turns true; if the process has not ended
// `grace` later the watcher flushes stdout, stderr and the log and ends it with exit_code_for(signal).
// A second signal ends it at once the same way.
void own_stop_signals(std::chrono::milliseconds grace);

// Installs this process's handlers again, where own_stop_signals() was called: for the code that
// initialises a library which installs handlers of its own (transport, after libfabric's first fabric).
void reclaim_signals();

// The signal that asked this process to stop, or 0 while none has.
int stop_requested();

// The documented exit code of a process stopped by `signal`: 128 + its number (143 for SIGTERM, 130 for
// SIGINT), the shell's convention, so supervisors see why it ended.
int exit_code_for(int signal);

// Ends the process now with `code`, after flushing stdout, stderr and the log, without running static
// destructors: libraries loaded for a backend that cannot run here (a CUDA library on a machine without a
// GPU) may crash in theirs, and nothing of ours needs them once the actors have stopped.
[[noreturn]] void end_process(int code);

// Sleeps up to `d`, returning early (true) once a stop was requested.
bool sleep_unless_stopped(std::chrono::milliseconds d);

}  // namespace dualpath
