"""Who owns this project's resources."""

OWNER = "ml-platform@example.com"
