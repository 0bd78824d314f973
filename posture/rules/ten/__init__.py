"""TEN-*: tenancy itself (DESIGN §3, §5): GPU workloads in namespaces no tenant owns.

Empty for now: TEN-001 (a GPU workload in an unclassified namespace) files its module here.
"""
