"""DRA-*: Dynamic Resource Allocation (DESIGN §2, §5): claims that reach other tenants' GPUs.

admin_access (DRA-001): an adminAccess claim or template in a tenant namespace, a tenant
namespace labelled for admin access, or a tenant principal able to set that label.
"""

from __future__ import annotations

from posture.rules.dra import admin_access

__all__ = ["admin_access"]
