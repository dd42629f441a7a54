"""Validating a new GPU node before work lands on it: the checks a validation pod runs
(`validate.py`, standard library only), the NVLink links each accelerator should show
(`expectations.py`), the names of the taint the validator removes and the labels it sets
(`names.py`), and the admission policy that holds its service account to exactly that
(`admission_policy.py`)."""
