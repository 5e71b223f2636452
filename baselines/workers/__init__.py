"""Worker scripts run by isolated environments (see baselines/isolated.py); never imported here."""
