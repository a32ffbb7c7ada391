"""The TriPeaks Race server: aiohttp shells around the pure race core."""
