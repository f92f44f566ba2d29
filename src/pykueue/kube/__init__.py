"""Kubernetes-generic machinery shared by every layer: the one ``Status`` error, the one selector parser
and the side HTTP servers' reply helper (``httpserve``).

The bottom package: it imports no other pykueue package, so ``store`` (which raises Status errors and
filters lists by label selector), ``api``, ``apiserver`` (which renders them) and ``client`` (which
parses them back) all use the same code (``k8s.io/apimachinery/pkg/{api/errors,labels,fields}``).
"""
