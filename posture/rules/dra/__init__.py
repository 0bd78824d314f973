"""DRA-*: Dynamic Resource Allocation (DESIGN §2, §5): claims that reach other tenants' GPUs.

Empty for now: DRA-001 (an adminAccess claim in a tenant namespace) files its module here.
"""
