"""The live dashboard: static HTML/CSS/JS served at ``/ui`` by ``pykueue serve`` and by
``pykueue dashboard`` (which proxies a cluster's API with a kubeconfig's credentials).

The page holds no data: it reads the API from the browser with a bearer token (list, then watch),
so the assets are served without authentication, like kube-apiserver's public paths.
"""
