"""Deals: a seed's shuffle, the exact solver (depth-first and layered), the dealer that
proves a deal winnable, and the commitment that lets players check it afterwards."""
