"""The exit codes every command shares, and the ``--help`` epilogues that list them."""

EXIT_FAILED = 1  # a failure while running: a method that cannot run here, an unreadable file
EXIT_USAGE = 2  # an option, name, number or path is wrong: nothing ran (click's code for usage errors)
EXIT_INVALID = 3  # a method's output failed validation
EXIT_INTERRUPTED = 130  # Ctrl-C (the shell's 128 + SIGINT); what was finished is kept


def _epilog(codes: dict[int, str]) -> str:
    return "\b\nExit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in codes.items())


_CODES = {
    0: "done",
    EXIT_FAILED: "failed while running (a method that cannot run here, an unreadable file)",
    EXIT_USAGE: "usage error: an option, name, number or path is wrong; nothing ran",
    EXIT_INVALID: "a method's output failed validation",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); what was finished is kept",
}
EPILOG = _epilog(_CODES)
NO_VALIDATION_EPILOG = _epilog({k: v for k, v in _CODES.items() if k != EXIT_INVALID})  # runs no method
GATE_EPILOG = _epilog({
    0: "FASTER or SAME",
    1: "SLOWER",
    EXIT_USAGE: "usage error; nothing ran",
    EXIT_INVALID: "UNCERTAIN (0 with --uncertain pass)",
    4: "INCOMPARABLE: another setup, or a row that failed validation",
    5: "an input could not be read, or another error",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
})
