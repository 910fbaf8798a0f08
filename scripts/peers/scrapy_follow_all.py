"""A follow-all Scrapy CrawlSpider for the local test site, as a user would write it: every
link followed (no extension filter), robots.txt obeyed, politeness off, matched concurrency.
Writes one URL per line for every response it parsed to $OUT (for comparison with the
ground truth). Run: scrapy runspider scrapy_follow_all.py -a seed=URL -s CONCURRENT_REQUESTS=64
"""
import os

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class FollowAll(CrawlSpider):
    name = "follow_all"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "RETRY_TIMES": 3,
        "DEPTH_LIMIT": 50,
    }
    rules = (Rule(LinkExtractor(deny_extensions=[]), callback="parse_item", follow=True),)

    def __init__(self, seed, *args, **kwargs):
        self.start_urls = [seed]
        self.out = open(os.environ.get("OUT", "scrapy-urls.txt"), "w")
        super().__init__(*args, **kwargs)

    def parse_start_url(self, response):
        return self.parse_item(response)

    def parse_item(self, response):
        self.out.write(response.url + "\n")
        return None
