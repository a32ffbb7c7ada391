"""The TriPeaks terminal client, bots and command-line tools."""
