"""The node canvas and what is drawn on it: backdrops, link values, failure marks, pin hints,
breadcrumbs, the legend."""
