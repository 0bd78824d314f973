"""How many ids one `pk__in` query may carry: the one place the number lives.

SQLite refuses a statement with more than 999 parameters (its default before 3.32, still the
limit of some builds); 900 leaves room for a query's other parameters.
"""

from __future__ import annotations

IDS_PER_QUERY = 900
