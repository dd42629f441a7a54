"""Facts read online into the project's lock file, for the offline plan (docs/lock.md)."""
