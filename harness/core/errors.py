"""The one error type users see: a single line naming the problem and the fix."""


class NetreproError(Exception):
    """A problem the user can fix; printed as one line, never as a traceback."""

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}" if fix else problem)
