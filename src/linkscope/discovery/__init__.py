"""linkscope.discovery"""
