"""Adapters that plug ObjectCache into serving frameworks (docs/integrations.md)."""
