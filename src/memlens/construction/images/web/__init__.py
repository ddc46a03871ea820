"""Web image source: icrawler engines or URL lists, a safe downloader, a URL-keyed cache, global dedupe."""
