"""The offline plan: the program run under Pulumi's mocks, with stand-ins answering its cloud
lookups, and the policy pack run over what it declares."""
