"""crawl stage: plan each question's evidence images and obtain them from the image source."""
