"""Image sources (``conf/images/``) and the offline renderers: what an image must show, how it is made."""
