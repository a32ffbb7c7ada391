"""The rules of TriPeaks: cards, the layout of the peaks, the engine and its refusals."""
