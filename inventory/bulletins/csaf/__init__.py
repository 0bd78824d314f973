"""CSAF 2.0 advisories: parse (document), version order (versions), NVIDIA products (products),
affected -> fixed pairs (fixes), the documents behind a provider feed (feed, given the caller's
fetch function). Pure: no Django, no network."""
