"""Closed-form models of the systems dcnsim simulates (pure Python, no simulation)."""
