"""The tamper-evident audit log: record changes with audit.services.audit_record."""
