"""Page sections: each ``render`` draws one part of the page from the loaded report."""
