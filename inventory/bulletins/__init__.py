"""CSAF bulletins: parsed (csaf/, pure), stored and judged against the nodes (store.py),
imported by hand or from feeds, revised under a security lead's eye, exported as VEX (vex/).
The models (models.py, revision_models.py) belong to the inventory app: inventory/models.py
imports them, so their app label, tables and migrations are inventory's."""
