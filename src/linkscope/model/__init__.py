"""linkscope.model"""
