"""The HTTP API's domain side: request and response models and the job service behind each call."""
