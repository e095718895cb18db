"""Diagnosis: why peer traffic is slow (ACS, IOMMU, BAR1, driver P2P status), which links show errors,
and which element is the likely culprit. Reads discovery facts, counter snapshots and RunRecords;
measures nothing itself."""
