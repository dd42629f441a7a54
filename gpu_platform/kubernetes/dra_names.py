"""Where NVIDIA's DRA driver runs, shared by the stack's config model (whose preview identity
reads that release's Helm records) and by what the program declares: a plain constant, so that
the config model imports nothing of the driver's release."""

DRA_DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"
