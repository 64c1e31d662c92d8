"""The one error the module raises for bad input: a variable, a config file or a value the script
was given that cannot be read. The message names it and what was expected; `code` is the exit
code dl-launch would use for the same mistake (64 a bad value, 65 a malformed config file, 66 a
missing one, 77 an unreadable one), so a script can end with it in one line."""


class PlanError(ValueError):
    def __init__(self, message, code=64):
        super().__init__(message)
        self.code = code
