"""``pykueue bench scheduler``: Kueue's scheduler benchmark (upstream's test/performance/scheduler)
played against a pykueue control plane, or any cluster, over HTTP."""
