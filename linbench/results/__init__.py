"""Run folders: results.csv, samples.csv and meta.json — written as points finish, read back
for resume and by the reports."""
