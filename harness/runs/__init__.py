"""runs: one run planned, executed, judged and analysed; the layer every study and command runs through."""
