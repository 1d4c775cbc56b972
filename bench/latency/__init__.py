"""One request's cost: a lone request through the job against the simplest query, and the transport alone."""
