"""linkscope.results"""
