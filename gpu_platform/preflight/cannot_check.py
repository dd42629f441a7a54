"""The one error a pre-flight check raises of its own: the cloud could not be asked."""


class CannotCheck(Exception):
    """No usable credentials, no way to the cloud, a permission the check needs is missing, an
    API that kept throttling, or no answer by the deadline. The message names the stack and
    what to do."""
