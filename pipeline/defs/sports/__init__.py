"""The sports assets: leagues, teams, futures, awards and their odds, partitioned by league and day."""
