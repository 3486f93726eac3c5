"""Stand-in package (tests/integration/integrations/standins/README.md)."""
