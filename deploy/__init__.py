"""Deployment: spark-submit launchers, a standalone-cluster recipe, Kubernetes manifests and recovery drills."""
