"""This project's own components, in a package named as many Pulumi projects name theirs."""
