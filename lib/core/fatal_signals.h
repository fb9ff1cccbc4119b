// The handler that finishes the trace before a signal's default action ends
// the process.
//
// Every signal whose default action is to terminate (with or without a core
// dump: signal(7)'s "Term" and "Core") is caught where the program left it at
// SIG_DFL, and only there. The handler writes the final block, puts SIG_DFL
// back and lets the signal act as it would have without the tracer: the
// exit status and the core dump are the program's. The program never sees
// the handler (lib/intercept/process.cc's sigaction and signal answer
// SIG_DFL), and any handler or SIG_IGN of its own replaces ours.
#ifndef DLPROF_LIB_CORE_FATAL_SIGNALS_H_
#define DLPROF_LIB_CORE_FATAL_SIGNALS_H_

#include <signal.h>

namespace dlprof::core {

// Term or Core by default (SIGKILL and SIGSTOP aside: they cannot be caught).
bool IsFatalByDefault(int sig);

// At start: our handler on every such signal still at SIG_DFL.
void InstallFatalSignalHandlers();

// Our handler is the one the kernel holds for `sig` now (asked of the
// kernel, so a program that replaced it by any path, even the raw system
// call, is seen).
bool OwnsFatalSignal(int sig);

// The program asks for SIG_DFL on a signal it had handled or ignored: our
// handler stands in for the default again. `old` gets what was there.
// False when the runtime is not recording here (then the program's call goes
// through as it is).
bool StandInForDefault(int sig, struct sigaction* old);

// Blocks every fatal signal on this thread (old mask in `old`): the final
// pass at exit is not cut short, and our handler on another thread waits
// for it instead.
void BlockFatalSignals(sigset_t* old);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_FATAL_SIGNALS_H_
